from benchmarks.report import main

main()
