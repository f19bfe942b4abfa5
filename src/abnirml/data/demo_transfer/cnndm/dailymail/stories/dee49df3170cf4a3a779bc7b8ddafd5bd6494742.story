By . Daily Mail Reporter .

A tortoise that escaped from its garden 18 months ago has been found less than half a mile from home.

Speedy, a 50-year-old tortoise, squeezed under a fence and disappeared in the summer of last year.

A dog walker found the tortoise in a hedge and recognised him from a poster.

His owners said he had probably spent the winter asleep under a pile of leaves.

They have now put a tracking tag on his shell.

@highlight

Speedy the tortoise escaped from his garden 18 months ago

@highlight

The tortoise was found less than half a mile from home

@highlight

His owners have put a tracking tag on his shell

