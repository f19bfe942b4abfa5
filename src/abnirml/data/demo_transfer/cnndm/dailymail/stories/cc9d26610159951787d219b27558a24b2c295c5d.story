By . Daily Mail Reporter .

A village pub with just six tables has been named the best pub in Britain.

The Plough in Little Hadham won the award for its home-cooked food and friendly welcome.

Judges said the pub felt like the living room of the village.

Landlady Jo Turner, who has run the pub for 20 years, said she was shocked to win.

She said she would celebrate by keeping the pub open late on Saturday.

@highlight

The Plough in Little Hadham named the best pub in Britain

@highlight

The village pub has just six tables

@highlight

Judges praised its home-cooked food and friendly welcome

