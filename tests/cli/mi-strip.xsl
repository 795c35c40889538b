<?xml version="1.0"?>
<!-- Copies an lttng MI (option mi xml) document without the elements of lttng-dynprobe's
     namespace (urn:lttng-dynprobe:mi:1): what is left must be valid against the
     stock MI schema.  Used by test-mi.sh. -->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
		xmlns:dp="urn:lttng-dynprobe:mi:1">
	<xsl:template match="dp:*"/>
	<xsl:template match="*">
		<xsl:element name="{name()}" namespace="{namespace-uri()}">
			<xsl:apply-templates select="@*|node()"/>
		</xsl:element>
	</xsl:template>
	<xsl:template match="@*|text()">
		<xsl:copy/>
	</xsl:template>
</xsl:stylesheet>
