"""Tables, files and pages a person reads."""
