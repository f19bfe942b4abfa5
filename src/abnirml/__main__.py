import sys

from abnirml.cli import main

sys.exit(main())
