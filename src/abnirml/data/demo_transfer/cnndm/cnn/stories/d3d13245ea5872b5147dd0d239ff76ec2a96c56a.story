(CNN) -- One of the most successful players in tennis history announced her retirement on Wednesday at the age of 37.

The tennis star won 19 major titles during a career that lasted nearly two decades.

In a message to fans, she said her body could no longer cope with the demands of the tour.

She said she planned to spend more time with her family and to coach young players.

Fellow players paid tribute to her, calling her an inspiration to a generation.

@highlight

Tennis star announces her retirement at 37

@highlight

She won 19 major titles in nearly two decades

@highlight

Fellow players call her an inspiration

