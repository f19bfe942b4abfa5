By . Daily Mail Reporter .

A schoolboy walking on a beach with his father has found a dinosaur footprint thought to be 165 million years old.

Oliver Grant, nine, spotted the three-toed footprint in a rock exposed by the tide on the Yorkshire coast.

Experts from a local museum confirmed it was made by a meat-eating dinosaur about the size of a horse.

The footprint has been removed and will go on display at the museum.

Oliver said he wants to be a scientist who digs up dinosaurs when he grows up.

@highlight

Oliver Grant, nine, found a dinosaur footprint on a beach

@highlight

The footprint is thought to be 165 million years old

@highlight

It will go on display at a museum

