#!/usr/bin/env bash
# Schema check of deploy/kubernetes/*.yaml, offline (no cluster): kubernetes-validate (PyPI; installed with pip when
# missing) in --strict mode, which also refuses fields the schema does not know, against Kubernetes 1.28 (the oldest
# the manifests support: detection's shard comes from the apps.kubernetes.io/pod-index label) and against the newest
# schema version the installed package ships. Fails on a schema error; on a resource whose kind or apiVersion has no
# schema (kubernetes-validate only warns about those); on a file with no resource; on a duplicate mapping key (PyYAML
# would silently keep the last, kubectl refuses it); on a resource quantity that does not parse (the schema takes any
# string); on a manifest without its header comment. First a self-check: broken copies of a manifest, in a temporary
# directory, must each fail, so a validator that passes everything cannot pass for a check. The flags, variables,
# ports and shard wiring are checked against the executables by Tests/IntegrationTests/KubernetesManifestTests.swift
# (swift test), not here.
#
#   scripts/check-kubernetes.sh [MANIFEST...]      (default: deploy/kubernetes/*.yaml)
set -euo pipefail
manifests=()
for file in "$@"; do manifests+=("$(realpath "$file")"); done
cd "$(dirname "$0")/.."

OLDEST=1.28
((${#manifests[@]})) || manifests=(deploy/kubernetes/*.yaml)
[ -e "${manifests[0]}" ] || { echo "check-kubernetes: no manifests in deploy/kubernetes" >&2; exit 1; }

if ! python3 -c "import kubernetes_validate" >/dev/null 2>&1; then
  echo "check-kubernetes: installing kubernetes-validate from PyPI" >&2
  python3 -m pip install --quiet kubernetes-validate 2>&1 | grep -v "Running pip as the 'root' user" >&2 || true
  python3 -c "import kubernetes_validate" >/dev/null 2>&1 || { echo "check-kubernetes: kubernetes-validate did not install" >&2; exit 1; }
fi
# The kubernetes-validate command of this python3 (the same program as the console script of that name).
validator=(python3 -m kubernetes_validate)
package_version=$("${validator[@]}" --version)
# The schema versions the package ships (kubernetes-json-schema/vX.Y.Z-local*), newest by version order.
NEWEST=$(python3 -c '
import kubernetes_validate.utils as utils
from packaging.version import Version
print(".".join(max(utils.all_versions(), key=Version).split(".")[:2]))')

# validate VERSION... -- FILE...: one kubernetes-validate --strict run over every file and version; prints each
# file's verdict, and fails unless every file has resources and no ERROR, FATAL or WARN line (a kind or apiVersion
# without a schema is only a WARN to kubernetes-validate, and would pass).
validate() {
  local versions=() files=() output status=0 file bad=0 count
  while [ "$1" != -- ]; do versions+=(-k "$1"); shift; done
  shift
  files=("$@")
  output=$("${validator[@]}" --strict "${versions[@]}" "${files[@]}" 2>&1) || status=$?
  for file in "${files[@]}"; do
    count=$(grep -c "^INFO $file passed " <<<"$output" || true)
    if grep -qE "^(ERROR|FATAL|WARN) $file " <<<"$output" || ((count == 0)); then
      grep -E "^(ERROR|FATAL|WARN) $file " <<<"$output" | sed 's/^/    /' >&2 || echo "    $file: no resource in it" >&2
      echo "  $file: INVALID"
      bad=1
    else
      echo "  $file: $count resource checks passed ($((count / (${#versions[@]} / 2))) resources x $((${#versions[@]} / 2)) versions)"
    fi
  done
  # Anything else it said (a file it could not read or parse, a version it does not know).
  if ((status != 0 && bad == 0)); then printf '%s\n' "$output" | grep -v '^INFO ' >&2; bad=1; fi
  return "$bad"
}

# Duplicate keys in any mapping, quantities that do not parse, and the header comment every manifest starts with.
structure() {
  python3 - "$@" <<'EOF'
import sys, yaml
class Loader(yaml.SafeLoader):
    pass
def mapping(loader, node, deep=False):
    keys = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in keys:
            raise yaml.constructor.ConstructorError(None, None, "duplicate key %r" % (key,), key_node.start_mark)
        keys.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)
Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
# Quantities (requests, limits, sizeLimit) are only "string or number" in the schema; the API server parses them.
import re
quantity = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[mkMGTPE])?$")
def quantities(node, where):
    bad = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("requests", "limits") and isinstance(value, dict):
                bad += ["%s.%s.%s: %r" % (where, key, name, text) for name, text in value.items()
                        if not quantity.match(str(text))]
            elif key == "sizeLimit" and not quantity.match(str(value)):
                bad.append("%s.sizeLimit: %r" % (where, value))
            else:
                bad += quantities(value, "%s.%s" % (where, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            bad += quantities(item, "%s.%d" % (where, index))
    return bad
failed = False
for name in sys.argv[1:]:
    text = open(name).read()
    if not text.startswith("# "):
        print("%s: no header comment (a README-style '# …' block first)" % name, file=sys.stderr)
        failed = True
    try:
        for document in yaml.load_all(text, Loader=Loader):
            for problem in quantities(document, (document or {}).get("kind", "?")):
                print("%s: not a quantity: %s" % (name, problem), file=sys.stderr)
                failed = True
    except yaml.YAMLError as error:
        print("%s: %s" % (name, error), file=sys.stderr)
        failed = True
sys.exit(1 if failed else 0)
EOF
}

# Self-check on broken copies: an unknown field (refused only in strict mode), a wrong type, a kind without a
# schema, a duplicate key, a memory limit that is no quantity. Each must fail on its own.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
sample=${manifests[0]}
sed '0,/^\( *\)publishNotReadyAddresses:/s//\1publishNotReadyAddress:/' "$sample" >"$scratch/unknown-field.yaml"
sed '0,/^\( *\)replicas: [0-9]*/s//\1replicas: two/' "$sample" >"$scratch/wrong-type.yaml"
sed '0,/^kind: StatefulSet$/s//kind: StatefulSett/' "$sample" >"$scratch/unknown-kind.yaml"
sed '0,/^\( *\)replicas: \([0-9]*\)/s//&\n\1replicas: \2/' "$sample" >"$scratch/duplicate-key.yaml"
sed '0,/^\( *\)memory: [0-9]*[MG]i$/s//\1memory: lots/' "$sample" >"$scratch/bad-quantity.yaml"
broken=()
for name in unknown-field wrong-type unknown-kind duplicate-key bad-quantity; do
  if cmp -s "$sample" "$scratch/$name.yaml"; then
    echo "check-kubernetes: self-check could not make $name of $sample" >&2
    exit 1
  fi
  broken+=("$scratch/$name.yaml")
done
verdicts=$(validate "$NEWEST" -- "${broken[@]:0:3}" 2>/dev/null || true)
for file in "${broken[@]:0:3}"; do
  if ! grep -q "^  $file: INVALID" <<<"$verdicts"; then
    echo "check-kubernetes: self-check failed: $(basename "$file" .yaml) of $sample passed kubernetes-validate" >&2
    exit 1
  fi
done
for file in "${broken[@]:3}"; do
  if structure "$file" 2>/dev/null; then
    echo "check-kubernetes: self-check failed: $(basename "$file" .yaml) of $sample passed" >&2
    exit 1
  fi
done
echo "check-kubernetes: self-check: copies of $sample with an unknown field, a wrong type, an unknown kind, a duplicate key and a bad quantity each fail"

structure "${manifests[@]}"
echo "check-kubernetes: kubernetes-validate $package_version --strict against Kubernetes $OLDEST and $NEWEST (the newest schema it ships)"
validate "$OLDEST" "$NEWEST" -- "${manifests[@]}"
