By . Daily Mail Reporter .

A pensioner has grown a giant pumpkin weighing more than a ton, breaking the British record.

Ken Moss, 74, fed the pumpkin with seaweed and watered it twice a day in his back garden.

It took six people and a forklift to move the giant pumpkin to the village show.

The judges measured its weight at 1,103 kilograms.

Mr Moss said he would save the seeds and try to grow an even bigger one next year.

@highlight

Ken Moss, 74, grew a giant pumpkin weighing more than a ton

@highlight

The pumpkin broke the British record

@highlight

It took six people and a forklift to move it

