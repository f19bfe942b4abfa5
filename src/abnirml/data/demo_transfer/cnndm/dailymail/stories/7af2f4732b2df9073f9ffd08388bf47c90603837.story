By . Daily Mail Reporter .

A man has cycled from John O'Groats to Land's End on a penny-farthing, taking 21 days to complete the journey.

Steve Hill, 45, rode a replica of the Victorian bicycle, which has a front wheel taller than a man.

He said the hardest part was climbing hills, as the penny-farthing has no gears.

He fell off twice but escaped with bruises.

Mr Hill raised £12,000 for a children's charity during the ride.

@highlight

Steve Hill rode a penny-farthing from John O'Groats to Land's End

@highlight

The journey across Britain took 21 days

@highlight

He raised £12,000 for a children's charity

