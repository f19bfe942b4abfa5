By . Daily Mail Reporter .

A dog that went missing on a family holiday has turned up at its home 200 miles away, five weeks after it disappeared.

Bella, a three-year-old collie, ran off during a firework display near a campsite in Devon.

Her owners searched for days and put up posters before returning home without her.

A neighbour spotted the dog on the doorstep, thin and tired but otherwise healthy.

A vet said the dog had probably followed familiar smells and landmarks to find her way home.

@highlight

Bella the collie went missing on a holiday in Devon

@highlight

The dog turned up at home 200 miles away five weeks later

@highlight

Vet says she probably followed familiar smells home

