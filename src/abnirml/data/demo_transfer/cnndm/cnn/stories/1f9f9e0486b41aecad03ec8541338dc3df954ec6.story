(CNN) -- A volcano erupted on Thursday, sending a column of ash several kilometres into the sky and covering nearby villages in grey dust.

Authorities evacuated more than 5,000 people living within 10 kilometres of the crater.

Flights at the regional airport were suspended because of the ash cloud.

Scientists had raised the alert level at the volcano last week after detecting small earthquakes.

No injuries have been reported.

@highlight

Volcano erupts, covering nearby villages in ash

@highlight

More than 5,000 people evacuated near the crater

@highlight

Flights suspended at regional airport because of ash cloud

