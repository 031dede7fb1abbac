from monsearch.cli import main

main()
