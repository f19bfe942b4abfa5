(CNN) -- Parts of a large coral reef are showing signs of recovery after several years of damage from warm water, scientists said on Tuesday.

A survey found that coral cover on the northern part of the reef had risen to its highest level in 30 years.

The scientists warned that the recovery was fragile and could be reversed by another heat wave.

Fast-growing corals had driven much of the increase, but they are also the most easily damaged.

The survey team called for faster cuts in greenhouse gas emissions to protect the coral reef.

@highlight

Coral reef shows signs of recovery after years of damage

@highlight

Coral cover on the northern reef at its highest level in 30 years

@highlight

Scientists warn the recovery is fragile

