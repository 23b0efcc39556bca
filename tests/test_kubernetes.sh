#!/bin/sh
# SPDX-License-Identifier: MIT
# test_kubernetes.sh - contrib/kubernetes's manifests, checked offline:
# kubectl decodes each into the API's types (YAML, kinds, field types),
# npm's kubernetes-models validates each object against the API's schemas
# (required fields, enums), a field kubectl's decoding drops is a typo,
# and the DaemonSet and the example pod agree (tests/k8s-validate.mjs).
# Broken copies must fail, so that the checks are seen to check.
#
# Needs kubectl (Debian: kubernetes-client), node, and js-yaml and
# kubernetes-models installed by npm in $HOTMAP_K8S_MODULES (default
# ~/.cache/hotmap/k8s-validate/node_modules, where contrib/dev/deps.sh
# puts them).  Skipped without them, unless HOTMAP_REQUIRE_K8S=1, as CI
# sets it.  Prints TAP.

LC_ALL=C
export LC_ALL

KUBECTL=${KUBECTL:-kubectl}
NODE=${NODE:-node}
HOTMAP_K8S_MODULES=${HOTMAP_K8S_MODULES:-${XDG_CACHE_HOME:-$HOME/.cache}/hotmap/k8s-validate/node_modules}
srcdir=${TESTS_SRCDIR:-$(dirname "$0")}
k8s=$srcdir/../contrib/kubernetes
validate=$srcdir/k8s-validate.mjs
PLAN=10

. "$srcdir/tap.sh"

missing=
command -v "$KUBECTL" >/dev/null 2>&1 || missing="$missing kubectl"
command -v "$NODE" >/dev/null 2>&1 || missing="$missing node"
[ -d "$HOTMAP_K8S_MODULES/kubernetes-models" ] && [ -d "$HOTMAP_K8S_MODULES/js-yaml" ] ||
	missing="$missing kubernetes-models/js-yaml (in $HOTMAP_K8S_MODULES)"
if [ -n "$missing" ]; then
	if [ "${HOTMAP_REQUIRE_K8S:-0}" = 1 ]; then
		echo "1..$PLAN"
		echo "Bail out! required (HOTMAP_REQUIRE_K8S=1) and missing:$missing"
		exit 1
	fi
	echo "1..0 # SKIP missing:$missing (contrib/dev/deps.sh installs them)"
	exit 0
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/hotmap-k8s.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' HUP INT TERM
# never a real cluster: --local reads no configuration, and this one is empty
KUBECONFIG=$dir/kubeconfig
export KUBECONFIG
: >"$KUBECONFIG"

# check FILE: 0 when kubectl decodes it and k8s-validate.mjs finds nothing
# to say; what they said is in $dir/why.
check() {
	# set env adds a variable: kubectl prints an object only when it changes one
	if ! "$KUBECTL" set env --local -f "$1" HOTMAP_K8S_CHECK=1 -o json >"$dir/decoded" 2>"$dir/why"; then
		return 1
	fi
	"$NODE" "$validate" "$HOTMAP_K8S_MODULES" "$1" "$dir/decoded" >"$dir/why" 2>&1
}

# agree DAEMONSET POD: the pair keeps README.md's promises.
agree() {
	"$NODE" "$validate" "$HOTMAP_K8S_MODULES" --hotmap "$1" "$2" >"$dir/why" 2>&1
}

echo "1..$PLAN"

for f in hotmapd-daemonset.yaml example-pod.yaml; do
	if check "$k8s/$f"; then
		ok "$f is valid"
	else
		not_ok "$f is valid" "$(cat "$dir/why")"
	fi
done
if agree "$k8s/hotmapd-daemonset.yaml" "$k8s/example-pod.yaml"; then
	ok "the DaemonSet and the example pod agree, both locked down"
else
	not_ok "the DaemonSet and the example pod agree, both locked down" "$(cat "$dir/why")"
fi

# broken NAME SED-SCRIPT FILE: a copy of FILE edited must be rejected.
broken() {
	sed "$2" "$k8s/$3" >"$dir/$3"
	if cmp -s "$k8s/$3" "$dir/$3"; then
		not_ok "rejects $1" "the edit '$2' changed nothing in $3"
	elif ! check "$dir/$3"; then
		ok "rejects $1"
	else
		not_ok "rejects $1" "$3 with '$2' passed"
	fi
}
broken "a field name with a typo" 's/readOnlyRootFilesystem/readOnlyRootFilesytem/' example-pod.yaml
broken "a field of the wrong type" 's/runAsUser: 20000/runAsUser: "twenty"/' example-pod.yaml
broken "a missing required field" 's/^  containers:/  containerz:/' example-pod.yaml
broken "a value the API does not allow" 's/type: RuntimeDefault/type: Sometimes/' hotmapd-daemonset.yaml
broken "a kind the API does not have" 's/^kind: DaemonSet/kind: DaemonSett/' hotmapd-daemonset.yaml
broken "YAML that does not parse" 's/^  selector:/  selector: [/' hotmapd-daemonset.yaml

# and pairs that disagree
sed 's|value: /run/hotmap/hotmapd.sock|value: /run/hotmap/other.sock|; /mountPath: \/data/{n;s/readOnly: true/readOnly: false/}' \
	"$k8s/example-pod.yaml" >"$dir/pod.yaml"
if ! agree "$k8s/hotmapd-daemonset.yaml" "$dir/pod.yaml" &&
   grep -q "HOTMAP_SOCKET" "$dir/why" && grep -q "mounted writable" "$dir/why"; then
	ok "rejects a pod with another socket or writable data"
else
	not_ok "rejects a pod with another socket or writable data" "$(cat "$dir/why")"
fi

tap_finish
