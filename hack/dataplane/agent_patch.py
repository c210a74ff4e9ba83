# Loaded by the linuxbridge agent wrapper that hack/dataplane.sh writes.
#
# Debian 12's kernel here has only nftables-based ebtables (ebtables-nft 1.8.9). Deleting a rule
# by its full spec fails with exit code 4 when the rule uses --among-src, and neutron's
# arp_protect retries exit code 4 without end, so the agent hangs on the second update of a port
# (for example an allowed-address-pairs change). Delete those per-port MAC rules by their
# position in the chain instead; the rest of arp_protect is unchanged.
from neutron.plugins.ml2.drivers.linuxbridge.agent import arp_protect


def _delete_mac_rules_by_number(vif, current_rules):
    chain = arp_protect._mac_chain_name(vif)
    in_chain = False
    position = 0
    doomed = []
    for line in current_rules:
        if line.startswith('Bridge chain:'):
            in_chain = line.split()[2].rstrip(',') == chain
            position = 0
            continue
        if not in_chain or not line.startswith('-'):
            continue
        position += 1
        if ('-i %s ' % vif) in (line + ' ') and '--among-src' in line:
            doomed.append(position)
    for number in sorted(doomed, reverse=True):
        arp_protect.ebtables(['-D', chain, str(number)])


arp_protect._delete_vif_mac_rules = _delete_mac_rules_by_number
