// The APNs simulator's TLS identity: a self-signed P-256 certificate for localhost and 127.0.0.1, valid for a century.
// Made once with openssl for the simulator alone (it proves nothing to anyone; clients that talk to the simulator trust
// exactly this certificate as their CA). Not a secret.
export const SIMULATOR_CERT = `-----BEGIN CERTIFICATE-----
MIIBsTCCAVegAwIBAgIUUzEg25MxCCoB4d6XsHkJ7IUCgMkwCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUZmVycnktYXBucy1zaW11bGF0b3IwIBcNMjYxMTI4MjM1MjQ5
WhgPMjEyNjExMDQyMzUyNDlaMB8xHTAbBgNVBAMMFGZlcnJ5LWFwbnMtc2ltdWxh
dG9yMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE/5iFDRDpANEj8yADTJFpHxLg
8ZtzGqIgTD3+qnwRH11V8efoW7XxfM1gK+KC5n3af35RLdf+h5ZcP5Bw3waI36Nv
MG0wHQYDVR0OBBYEFGoRhgrLADY+J1dz+txp9C03zvPPMB8GA1UdIwQYMBaAFGoR
hgrLADY+J1dz+txp9C03zvPPMA8GA1UdEwEB/wQFMAMBAf8wGgYDVR0RBBMwEYIJ
bG9jYWxob3N0hwR/AAABMAoGCCqGSM49BAMCA0gAMEUCIQCuRTeWjRE9gEK8jrYc
9P13637ZAVA/IfdZ+eu2apfMWwIgBHsTc69efSAeL4VnB+PSIgr7/BY3XAy0k4iN
iSL1xUw=
-----END CERTIFICATE-----
`;
export const SIMULATOR_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgZeSl74v0eqv7rCLv
ReQM0YPNOc33fUNGhJIG5T/NgVihRANCAAT/mIUNEOkA0SPzIANMkWkfEuDxm3Ma
oiBMPf6qfBEfXVXx5+hbtfF8zWAr4oLmfdp/flEt1/6Hllw/kHDfBojf
-----END PRIVATE KEY-----
`;
