By . Daily Mail Reporter .

A couple who picked their numbers from a fortune cookie have won a £2.7million lottery jackpot.

Sue and Martin Lowe, from Derby, kept the slip of paper from a takeaway meal three years ago.

They used the same numbers every week until the jackpot came up on Saturday night.

Mrs Lowe said she checked the ticket five times before she believed it.

The couple plan to pay off their mortgage, help their children buy homes and take a cruise.

@highlight

Sue and Martin Lowe used numbers from a fortune cookie

@highlight

Couple won a £2.7million lottery jackpot on Saturday

@highlight

They plan to pay off their mortgage and take a cruise

