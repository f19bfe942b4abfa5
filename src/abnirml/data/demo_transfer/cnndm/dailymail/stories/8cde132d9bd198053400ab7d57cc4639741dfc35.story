By . Daily Mail Reporter .

A family digging a pond in their garden have found a hoard of more than 300 Roman coins.

The Clarke family were clearing soil in their garden in Somerset when they spotted green metal discs.

Experts said the coins were about 1,700 years old and had probably been buried in a pot for safekeeping.

The find has been reported to the coroner, who will decide whether it counts as treasure.

The family said they had given up on the garden pond for now.

@highlight

The Clarke family found more than 300 Roman coins in their garden

@highlight

The coins are about 1,700 years old

@highlight

The find has been reported to the coroner

