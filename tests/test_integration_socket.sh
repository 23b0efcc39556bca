#!/bin/sh
# SPDX-License-Identifier: MIT
# The integration suite again with no shared region: every byte then
# travels over the socket, the path older daemons and small clients use.
HOTMAP_SHM_SIZE=0
export HOTMAP_SHM_SIZE
exec "${TESTS_BUILDDIR:-$(dirname "$0")}/test_integration"
