(CNN) -- Sales of electric cars reached a record high last year, making up nearly one in five new cars sold around the world.

A report by an energy research group said about 14 million electric cars were sold in the year.

China accounted for more than half of the sales, followed by Europe and the United States.

The report said falling battery prices and government incentives had helped drive demand.

It warned, however, that the number of charging points was not growing fast enough.

@highlight

Electric car sales reach a record high

@highlight

About 14 million electric cars sold last year

@highlight

Report warns that charging points are not keeping up

