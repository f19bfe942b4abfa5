(CNN) -- Rescuers freed 12 miners on Saturday who had been trapped underground for four days after a tunnel collapsed.

The miners were brought to the surface one by one through a narrow shaft drilled by the rescuers.

Family members who had waited at the mine entrance cheered as each man appeared.

Doctors said the miners were weak and dehydrated but in stable condition.

The mining company said it would investigate why the tunnel had collapsed.

@highlight

Rescuers free 12 trapped miners after four days underground

@highlight

The miners were brought up through a narrow shaft

@highlight

Mining company to investigate the tunnel collapse

