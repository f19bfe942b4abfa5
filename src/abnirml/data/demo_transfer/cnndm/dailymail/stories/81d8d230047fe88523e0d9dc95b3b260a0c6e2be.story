By . Daily Mail Reporter .

A cat that spent three days stuck at the top of a 60ft tree has been rescued by a tree surgeon.

Neighbours heard the cat crying and called the fire service, which said it could not reach the branch safely.

Tree surgeon Liam Hart climbed the tree in his spare time and carried the cat down in a bag.

The cat, called Pickle, was hungry but unhurt and was given a meal of tuna.

Her owner said she would keep Pickle indoors for a while.

@highlight

Cat called Pickle spent three days stuck up a 60ft tree

@highlight

Tree surgeon climbed the tree and carried the cat down

@highlight

Fire service said it could not reach the branch safely

