from ds4kit.cli import main

main()
