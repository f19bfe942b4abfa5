(CNN) -- A giant panda has given birth to a cub at a zoo, the first panda born there in more than a decade.

Keepers said the cub was born on Saturday night and appeared healthy.

The mother, a 12-year-old panda on loan from China, was seen cradling the cub in her den.

The zoo said visitors would not be able to see the cub for several months.

Giant pandas are no longer classed as endangered, but they remain vulnerable in the wild.

@highlight

Giant panda gives birth to a cub at a zoo

@highlight

It is the first panda born there in more than a decade

@highlight

Visitors will not be able to see the cub for months

