(CNN) -- A Kenyan runner broke the marathon world record on Sunday, finishing the race in Berlin in two hours and 35 seconds.

The runner took 30 seconds off the previous world record on a cool, windless morning.

He ran most of the second half of the marathon alone after his pacemakers dropped out.

Afterwards he said he had dreamed of the record since he started running as a boy.

Experts say a marathon in under two hours in an official race may now be within reach.

@highlight

Kenyan runner breaks the marathon world record in Berlin

@highlight

He finished in two hours and 35 seconds

@highlight

He ran much of the race alone after pacemakers dropped out

