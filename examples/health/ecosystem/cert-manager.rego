package driftguard

# cert-manager: a Certificate (cert-manager.io/v1) is Ready when its Secret
# holds a valid certificate; Issuing is True while a new one is being
# issued (the first time, or a renewal); a failed issuance leaves
# status.lastFailureTime and status.failedIssuanceAttempts, and is retried
# with a back-off.
#
#   generation not yet observed                   Progressing
#   Ready True, not Issuing                       Healthy, valid until status.notAfter
#   Ready True, Issuing (a renewal)               Healthy, renewing
#   Issuing True, no failure                      Progressing
#   a failed issuance (lastFailureTime)           Degraded, the Issuing or Ready condition's text
#   Ready False otherwise                         Degraded
#   no Ready condition yet                        Progressing

health := certificate_health if {
	input.object.apiVersion == "cert-manager.io/v1"
	input.object.kind == "Certificate"
}

certificate_ready := health_condition(input.object, "Ready")

certificate_issuing := health_condition(input.object, "Issuing")

certificate_health := {"state": "Progressing", "message": "generation not yet observed by cert-manager"} if {
	health_generation_behind(input.object)
} else := {"state": "Healthy", "message": sprintf("renewing (%s); valid until %s", [health_text(certificate_issuing), input.object.status.notAfter])} if {
	certificate_ready.status == "True"
	certificate_issuing.status == "True"
} else := {"state": "Healthy", "message": sprintf("valid until %s, renewal at %s", [input.object.status.notAfter, input.object.status.renewalTime])} if {
	certificate_ready.status == "True"
} else := {"state": "Degraded", "message": sprintf("issuance failed %d times, last at %s: %s", [object.get(input.object.status, "failedIssuanceAttempts", 1), input.object.status.lastFailureTime, certificate_failure])} if {
	input.object.status.lastFailureTime
} else := {"state": "Progressing", "message": sprintf("issuing: %s", [health_text(certificate_issuing)])} if {
	certificate_issuing.status == "True"
} else := {"state": "Degraded", "message": sprintf("not ready: %s", [health_text(certificate_ready)])} if {
	certificate_ready.status == "False"
} else := {"state": "Progressing", "message": "waiting for cert-manager"}

certificate_failure := health_text(certificate_issuing) if {
	certificate_issuing.status == "False"
} else := health_text(certificate_ready)
