from curate.cli import main

raise SystemExit(main())
