"""`python -m benchmarks`: every benchmark in one run (see benchmarks/run.py);
`python -m benchmarks gradbench [--quick] [--problems lse,gmm]`: GradBench's problems
(see benchmarks/gradbench/run.py)."""
import sys

if len(sys.argv) > 1 and sys.argv[1] == "gradbench":
    from benchmarks.gradbench.run import main as gradbench_main
    gradbench_main(sys.argv[2:])
else:
    from benchmarks.run import main
    main()
