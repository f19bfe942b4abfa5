"""Text processing: terms, sentences, stemming and stopwords (no heavy dependencies)."""
