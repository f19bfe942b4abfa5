By . Daily Mail Reporter .

A postman has retired after delivering letters on the same round for 50 years.

Derek Evans, 66, started as a postman in his home village at the age of 16.

Residents held a party for him and gave him a book of messages and photographs.

He estimates that he walked more than 100,000 miles on his round.

Mr Evans said he would miss chatting with people on the round.

@highlight

Derek Evans retires after 50 years as a postman

@highlight

He walked more than 100,000 miles on the same round

@highlight

Residents held a party for him

