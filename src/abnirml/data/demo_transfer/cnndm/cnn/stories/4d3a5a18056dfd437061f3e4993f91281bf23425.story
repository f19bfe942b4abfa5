(CNN) -- A city has banned most private cars from its historic centre in an effort to reduce pollution and make the streets safer for walkers.

From Monday, only residents, delivery vans and emergency vehicles may drive in the historic centre.

Drivers who break the ban will be fined by cameras at the entrances.

Shop owners were divided, with some fearing fewer customers and others expecting more people on foot.

The mayor said the city would add more buses and bicycle lanes to help people get around.

@highlight

City bans most private cars from its historic centre

@highlight

Cameras will fine drivers who break the ban

@highlight

Mayor promises more buses and bicycle lanes

