By . Daily Mail Reporter .

A hiker who went missing on a moor has been found alive after surviving five nights in freezing weather.

The 34-year-old man became lost in thick fog while walking alone on Dartmoor.

He survived by sheltering behind rocks and drinking water from streams.

A search helicopter spotted the hiker waving a red jacket on Friday morning.

Rescuers said he was cold and hungry but was expected to make a full recovery.

@highlight

Hiker found alive after five nights lost on Dartmoor

@highlight

He sheltered behind rocks and drank from streams

@highlight

A search helicopter spotted him waving a red jacket

