# `sam build` of DependenciesLayer (template.yaml, BuildMethod: makefile), included by arm64/Makefile
# or x86_64/Makefile, which set ARCH: the template's ContextPath names the folder of its Architecture
# parameter (SAM CLI resolves parameters in a resource's Metadata, and the Makefile it runs is the one
# in ContextPath), because SAM CLI hands a Makefile nothing but ARTIFACTS_DIR: no architecture.
#
# requirements.txt for Lambda's python3.13 on ARCH: manylinux wheels of that machine, whatever this
# one is. pip's own --platform cross-fetch is what makes an aarch64 layer on an x86_64 machine without
# Docker (SAM's python builder cannot cross-build), hence --only-binary=:all:: a dependency without a
# wheel for ARCH fails the build here rather than compiling for this machine. Lambda's python3.13
# runs on Amazon Linux 2023 (glibc 2.34), hence manylinux_2_34 as the newest tag accepted.
# Then their bytecode, compiled now with unchecked hashes (see shared/Makefile for why); pip's own
# .pyc files would be timestamp-based, hence --no-compile.
PYTHON ?= python3.13
HERE := $(dir $(lastword $(MAKEFILE_LIST)))
MACHINE_arm64 = aarch64
MACHINE_x86_64 = x86_64
MACHINE = $(MACHINE_$(ARCH))
PLATFORMS = --platform manylinux2014_$(MACHINE) --platform manylinux_2_28_$(MACHINE) \
	--platform manylinux_2_34_$(MACHINE)

build-DependenciesLayer:
	@test -n "$(MACHINE)" || { echo "layer.mk: ARCH must be arm64 or x86_64, not '$(ARCH)'" >&2; exit 1; }
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-compile --only-binary=:all: \
		--implementation cp --python-version 3.13 $(PLATFORMS) \
		--target "$(ARTIFACTS_DIR)/python" -r "$(HERE)requirements.txt"
	rm -rf "$(ARTIFACTS_DIR)/python/bin"
	$(PYTHON) -m compileall -q -f --invalidation-mode unchecked-hash "$(ARTIFACTS_DIR)/python"
