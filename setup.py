"""The compiled kernels of the metric engine (src/rerankeval/eval/_strings.c, _group.c, _ranking.c); the rest of
the package is declared in pyproject.toml."""

from setuptools import Extension, setup

KERNELS = "src/rerankeval/eval/"

setup(ext_modules=[Extension("rerankeval.eval._strings", [KERNELS + name for name in ("_strings.c", "_group.c",
                                                                                       "_ranking.c")],
                             depends=[KERNELS + "_columns.h"], extra_compile_args=["-O3", "-std=c11"])])
