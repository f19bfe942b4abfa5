By . Daily Mail Reporter .

A teenager has been praised for saving a young boy who was drowning at a busy swimming pool.

Jake Morris, 16, saw the boy sink to the bottom of the deep end and dived in to pull him out.

He then helped a lifeguard give the boy first aid until paramedics arrived.

The boy, aged six, was taken to hospital and has since made a full recovery.

The teenager said he had learned life saving skills at his swimming club.

@highlight

Jake Morris, 16, saved a boy drowning at a swimming pool

@highlight

He dived in and helped a lifeguard give first aid

@highlight

The six-year-old boy has made a full recovery

