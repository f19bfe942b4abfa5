(CNN) -- A strong earthquake shook a coastal city early on Wednesday, damaging dozens of buildings and cutting power to thousands of homes.

The earthquake had a magnitude of 6.4 and struck about 20 kilometres off the coast, according to the national geological service.

Residents ran into the streets as the shaking woke them before dawn.

Local officials said at least 15 people were injured, mostly by falling glass and debris.

No tsunami warning was issued, but schools in the city were closed while engineers inspected buildings.

@highlight

Magnitude 6.4 earthquake strikes off the coast

@highlight

At least 15 people injured and dozens of buildings damaged

@highlight

Schools closed while engineers inspect buildings

