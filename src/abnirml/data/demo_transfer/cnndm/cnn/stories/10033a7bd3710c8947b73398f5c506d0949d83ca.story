(CNN) -- Scientists exploring the deep sea off South America say they have discovered more than 50 species that may be new to science.

The team used a remotely operated vehicle to survey underwater mountains at depths of up to 4,500 metres.

Among the creatures found were a glass sponge, a see-through squid and several kinds of sea star.

The scientists said the discoveries showed how little is known about life in the deep sea.

They called for stronger protection of the area from fishing and mining.

@highlight

Scientists find more than 50 possible new species in the deep sea

@highlight

Team surveyed underwater mountains up to 4,500 metres deep

@highlight

Researchers call for protection from fishing and mining

