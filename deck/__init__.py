"""The deck room: a folder of slides exported to PDF, PNG and an editable PPTX, and the PPTX's fidelity check."""
