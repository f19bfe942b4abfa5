By . Daily Mail Reporter .

A 92-year-old grandmother has become the oldest woman in Britain to complete a skydive, jumping from 10,000 feet to raise money for a hospice.

Edna Walsh made the tandem skydive over Salisbury Plain with an instructor strapped to her back.

She said she had always wanted to skydive but had never had the nerve until her 90th birthday.

Her family watched from the ground as she landed safely and waved to the crowd.

The grandmother has raised more than £8,000 for the hospice that cared for her late husband.

@highlight

Edna Walsh, 92, completed a tandem skydive from 10,000 feet

@highlight

Grandmother raised more than £8,000 for a hospice

@highlight

She had always wanted to skydive but never had the nerve

