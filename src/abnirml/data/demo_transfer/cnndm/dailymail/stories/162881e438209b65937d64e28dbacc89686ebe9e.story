By . Daily Mail Reporter .

Twins have been born in different years after one arrived minutes before midnight on New Year's Eve and the other just after.

The twins' mother, Laura Bennett, gave birth at a hospital in Leeds.

Her son was born at 11.58pm on December 31, and her daughter at 12.04am on January 1.

Midwives said it was the first time they had seen twins born in different years.

The parents joked that the twins would never share a birthday party.

@highlight

Twins born minutes apart in different years

@highlight

A son was born before midnight and a daughter after

@highlight

Midwives had never seen twins born in different years

