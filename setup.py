"""The compiled string kernels of the metric engine (src/rerankeval/eval/_strings.c, _ties.c); the rest of the
package is declared in pyproject.toml."""

from setuptools import Extension, setup

KERNELS = "src/rerankeval/eval/"

setup(ext_modules=[Extension("rerankeval.eval._strings", [KERNELS + "_strings.c", KERNELS + "_ties.c"],
                             depends=[KERNELS + "_columns.h"], extra_compile_args=["-O3", "-std=c11"])])
