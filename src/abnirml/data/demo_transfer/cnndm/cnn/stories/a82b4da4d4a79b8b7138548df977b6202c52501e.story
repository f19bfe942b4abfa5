(CNN) -- The space agency has delayed the launch of its new moon rocket by at least two weeks after engineers found a fuel leak during a test.

The rocket was due to lift off on Friday carrying an uncrewed capsule on a trip around the moon.

Engineers discovered the leak while filling the rocket's tanks with liquid hydrogen on Monday.

A spokesperson said the agency would not launch until it was confident the problem was fixed.

The mission is a key test before astronauts fly around the moon on a later flight.

@highlight

Moon rocket launch delayed by at least two weeks

@highlight

Engineers found a fuel leak during a test on Monday

@highlight

The uncrewed mission is a test before astronauts fly

