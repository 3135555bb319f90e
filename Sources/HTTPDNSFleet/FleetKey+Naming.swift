import HTTPDNSCore
import HTTPDNSSodium

extension FleetKey: FleetNameHashing {}
