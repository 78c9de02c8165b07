"""What keeps `apace serve` safe on a LAN: who may talk to it (access, pairing), what it
accepts (limits, sdp) and the certificate it serves (tls)."""
