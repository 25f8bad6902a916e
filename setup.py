from setuptools import find_packages, setup

setup(
    name="alm_plugin",
    version="0.1.0",
    description="Attentive LM, AMSRN and character LMs with a word cache as a fairseq plugin",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="MIT",
    license_files=["LICENSE", "CITATION.cff"],
    classifiers=["License :: OSI Approved :: MIT License", "Programming Language :: Python :: 3"],
    packages=find_packages(include=["alm_plugin", "alm_plugin.*"]),
    python_requires=">=3.9",
    # fairseq is installed as `fairseq-fixed` (import name `fairseq`): the official 0.12.2
    # does not import on Python 3.11. scripts/install.sh is the exact recipe (CPU wheel of torch,
    # fairseq-fixed built without build isolation, an installed numpy kept); .ci/run calls it.
    # numpy 1.x or 2.x: alm_plugin/mends/numpy_compat.py gives fairseq the np.compat numpy 2 removed.
    install_requires=[
        "fairseq-fixed>=0.12.3",
        "torch>=2.0",
        "numpy",
        "sacremoses",
        "subword-nmt",
        "sacrebleu",
    ],
    extras_require={"test": ["pytest"], "plots": ["matplotlib"]},
    entry_points={
        "console_scripts": [
            "alm-plot-attention = alm_plugin.cli.plot_attention:main",
            "alm-cache-posterior = alm_plugin.cli.cache_posterior:main",
            "alm-rescore = alm_plugin.cli.rescore:main",
            "alm-score = alm_plugin.cli.score:main",
            "alm-cache-grid = alm_plugin.cli.cache_grid:main",
        ]
    },
)
