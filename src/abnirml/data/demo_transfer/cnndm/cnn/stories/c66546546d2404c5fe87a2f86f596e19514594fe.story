(CNN) -- A section of a bridge collapsed on Monday morning, closing a major highway and forcing thousands of drivers to take long detours.

Two cars fell with the bridge section, and their drivers were taken to hospital with minor injuries.

Officials said the bridge had been inspected last year and was not thought to be unsafe.

Engineers were examining the remains of the bridge to find out why it failed.

The highway is expected to stay closed for several weeks.

@highlight

Bridge section collapses, closing a major highway

@highlight

Two drivers taken to hospital with minor injuries

@highlight

Highway expected to stay closed for several weeks

