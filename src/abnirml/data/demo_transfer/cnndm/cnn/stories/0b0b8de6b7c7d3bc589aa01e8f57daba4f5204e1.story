(CNN) -- A heat wave broke temperature records in several European countries on Monday, with readings above 40 degrees Celsius in places that rarely see such heat.

Authorities issued health warnings and opened cooling centres for elderly people.

Railways slowed trains because of fears that the tracks could buckle in the heat.

Meteorologists said the heat wave was caused by a mass of hot air moving north from Africa.

Scientists say heat waves are becoming more frequent and more intense as the climate warms.

@highlight

Heat wave breaks temperature records across Europe

@highlight

Readings above 40 degrees Celsius in several countries

@highlight

Authorities issue health warnings and open cooling centres

