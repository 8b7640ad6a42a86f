// Package ovosrt is what the agent and the CLI need to handle stock OVOS
// skills as Python packages (docs/ovos.md): packing an OVOS skill source
// tree into a Chorus skill archive that carries its wheel (Pack), and
// installing those wheels offline into the skill's own directory on the
// satellite (Install).
//
// The archive layout is a Chorus skill directory:
//
//	<skill id>/SKILL.md    runtime: ovos, python_package, version
//	<skill id>/wheels/     the skill's wheel and, optionally, a wheelhouse
//	                       of the extra dependencies the satellite lacks
//
// and the installer adds
//
//	<skill id>/site/       pip --target: what the launcher's PYTHONPATH holds
package ovosrt
