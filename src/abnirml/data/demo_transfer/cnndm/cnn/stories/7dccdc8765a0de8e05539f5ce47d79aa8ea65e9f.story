(CNN) -- Divers have found the wreck of an ancient merchant ship off the Mediterranean coast, still loaded with hundreds of clay jars.

Archaeologists believe the shipwreck is more than 2,000 years old.

The jars, known as amphorae, were probably used to carry wine and olive oil.

The wreck lies at a depth of about 50 metres and is unusually well preserved.

Researchers plan to map the site in detail before deciding whether to raise any of the cargo.

@highlight

Divers find ancient shipwreck off the Mediterranean coast

@highlight

The ship is more than 2,000 years old

@highlight

Hundreds of clay jars found in the well-preserved wreck

