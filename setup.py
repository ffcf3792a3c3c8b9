"""Build srcad's compiled kernels; metadata lives in pyproject.toml."""
import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent

# The kernels are built for the machine that installs srcad (AVX2 and wider where it has them);
# SRCAD_PORTABLE=1 builds for the baseline instruction set instead (a binary to copy elsewhere).
# -ffp-contract=off: no fused multiply-adds, so every code path rounds as its plain C reads and
# results keep the same bits across paths (a batch of tangents against one at a time).
MARCH = [] if os.environ.get("SRCAD_PORTABLE", "0") not in ("", "0") else ["-march=native"]

extensions = [
    Extension(
        f"srcad._kernels.{pyx.stem}",
        [str(pyx.relative_to(HERE))],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3", "-fopenmp", "-ffp-contract=off"] + MARCH,
        extra_link_args=["-fopenmp"],
    )
    for pyx in sorted((HERE / "srcad" / "_kernels").glob("*.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        build_dir="build/cython",
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
        },
    ),
)
