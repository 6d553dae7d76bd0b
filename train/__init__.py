"""Export to MS-SWIFT format and the SFT launcher."""
