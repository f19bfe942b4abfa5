(CNN) -- A fast-moving wildfire forced thousands of residents to evacuate from three mountain towns on Tuesday as strong winds pushed the flames across dry hillsides.

Fire officials said the wildfire had burned more than 12,000 acres since it started on Sunday afternoon.

About 400 firefighters, supported by helicopters dropping water, were working to protect homes on the edge of the towns.

No deaths have been reported, but at least 30 buildings have been destroyed.

Officials said the cause of the fire was under investigation and urged residents to follow evacuation orders.

@highlight

Wildfire has burned more than 12,000 acres since Sunday

@highlight

Thousands of residents evacuate three mountain towns

@highlight

About 400 firefighters are working to protect homes

