By . Daily Mail Reporter .

A bride who left her wedding dress on a train two days before her wedding has been reunited with it after a guard found it.

Emily Shaw was travelling home from a final fitting when she got off the train without the bag containing the dress.

She appealed for help on social media, and her post was shared thousands of times.

A train guard found the dress in a luggage rack and handed it in at the station.

The bride said the guard would be invited to the wedding.

@highlight

Emily Shaw left her wedding dress on a train

@highlight

A guard found the dress in a luggage rack

@highlight

The bride has invited the guard to the wedding

