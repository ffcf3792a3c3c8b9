"""GradBench's problems written as plain NumPy and differentiated through srcad's public API.

    python -m benchmarks gradbench [--quick] [--problems lse,gmm] [--threads 1,2]

Each module (hello, lse, llsq, gmm, kmeans, ode, lstm, det, ba, ht, saddle, particle) follows the
interface in benchmarks/gradbench/common.py. benchmarks/gradbench/run.py times them."""
PROBLEMS = ["hello", "lse", "llsq", "gmm", "kmeans", "ode", "lstm", "det", "ba", "ht", "saddle", "particle"]
