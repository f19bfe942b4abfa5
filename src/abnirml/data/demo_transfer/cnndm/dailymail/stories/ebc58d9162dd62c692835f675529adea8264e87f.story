By . Daily Mail Reporter .

A seagull that snatched a tourist's sandwich flew straight into a café window moments later.

The bird grabbed the sandwich from a woman's hand on the seafront in St Ives.

Witnesses said the seagull was distracted by its meal and did not see the glass.

The bird was stunned but flew off after a few minutes, leaving the sandwich behind.

Café staff said seagulls steal food from customers every day in the summer.

@highlight

A seagull snatched a tourist's sandwich in St Ives

@highlight

The bird flew into a café window moments later

@highlight

It flew off after a few minutes, leaving the sandwich

