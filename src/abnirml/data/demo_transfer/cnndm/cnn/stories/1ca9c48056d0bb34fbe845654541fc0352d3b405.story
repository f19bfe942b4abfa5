(CNN) -- A major airline cancelled more than 700 flights on Thursday after a computer failure grounded its planes for several hours.

The airline said the failure affected the system used to check in passengers and plan crew schedules.

Long queues formed at airports as travellers tried to rebook their flights.

The airline's chief executive apologised and said the problem was not caused by a cyber attack.

Passengers whose flights were cancelled will be offered refunds or free rebooking.

@highlight

Airline cancels more than 700 flights after computer failure

@highlight

Chief executive says the problem was not a cyber attack

@highlight

Passengers offered refunds or free rebooking

