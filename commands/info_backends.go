package commands

import (
	"fmt"
	"strings"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// backendLine is one backend's INFO line: its address, whether its votes
// count (and why not), and the server identity the quorum last saw.
func backendLine(i int, st quorum.NodeState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "backend%d:addr=%s,state=%s", i, st.Name, backendState(st))
	if st.Watched {
		role := "master"
		if st.Replica {
			role = "slave"
		}
		fmt.Fprintf(&b, ",run_id=%s,role=%s,connected_slaves=%d", st.RunID, role, st.Replicas)
	}
	writeQuarantine(&b, st.Quarantined, st.QuarantinedUntil, st.QuarantinePending)
	if st.Refused != "" {
		fmt.Fprintf(&b, ",refused=%s", infoValue(st.Refused))
	}
	if st.LastError != "" {
		fmt.Fprintf(&b, ",last_error=%s", infoValue(st.LastError))
	}
	return b.String()
}

func backendState(st quorum.NodeState) string {
	switch {
	case st.Refused != "":
		return "refused"
	case !st.Up && st.LastError == "":
		return "unknown" // not looked at yet
	case !st.Up:
		return "down"
	case st.Quarantined:
		return "quarantined"
	}
	return "up"
}

// infoValue keeps free text inside one INFO field.
func infoValue(s string) string {
	return strings.NewReplacer(",", ";", "\r", " ", "\n", " ").Replace(s)
}

// writeQuarantine adds the quarantine fields of a backend or a shard whose
// votes do not count yet: the time left and, under auto, whether the other
// backends' lock horizons were read yet (pending: not, or too few
// answered; the time left is the bound known so far).
func writeQuarantine(b *strings.Builder, quarantined bool, until time.Time, pending bool) {
	if !quarantined {
		return
	}
	fmt.Fprintf(b, ",quarantine_left_ms=%d", time.Until(until).Milliseconds())
	if pending {
		b.WriteString(",quarantine_pending=1")
	}
}
