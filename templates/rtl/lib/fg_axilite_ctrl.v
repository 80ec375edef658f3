// AXI4-Lite control slave with the register map Vitis HLS generates for `s_axilite port=return`
// (ap_ctrl_hs): 0x00 control (bit 0 ap_start, 1 ap_done (clear on read), 2 ap_idle, 3 ap_ready
// (clear on read), 7 auto_restart, 9 interrupt), 0x04 global interrupt enable, 0x08 interrupt
// enable (bit 0 done, bit 1 ready), 0x0c interrupt status (toggle on write), then the arguments:
// N_WORDS 32-bit registers at the byte addresses packed in ARG_ADDRS (16 bits each). A read takes
// three cycles (AXI4-Lite lets RVALID come any time after the address): the address is registered,
// then which register it names (one flag each), then the word, an AND-OR of the flagged registers,
// so that no path both decodes an address and selects among many words (a design with many memory
// ports has a dozen or more argument words: 7 LUT levels when done in one cycle).
module fg_axilite_ctrl #(
    parameter integer ADDR_W = 6,
    parameter integer N_WORDS = 1,
    parameter [16*N_WORDS-1:0] ARG_ADDRS = 16'h0010
) (
    input  wire                    clk,
    input  wire                    rst,
    input  wire [ADDR_W-1:0]       awaddr,
    input  wire                    awvalid,
    output wire                    awready,
    input  wire [31:0]             wdata,
    input  wire [3:0]              wstrb,
    input  wire                    wvalid,
    output wire                    wready,
    output wire [1:0]              bresp,
    output reg                     bvalid,
    input  wire                    bready,
    input  wire [ADDR_W-1:0]       araddr,
    input  wire                    arvalid,
    output wire                    arready,
    output reg  [31:0]             rdata,
    output wire [1:0]              rresp,
    output reg                     rvalid,
    input  wire                    rready,
    /* verilator lint_off SYMRSVDWORD */
    output wire                    interrupt,  // Vitis HLS's name for it
    /* verilator lint_on SYMRSVDWORD */
    output wire [32*N_WORDS-1:0]   args,
    output reg                     ap_start,
    input  wire                    ap_done,
    input  wire                    ap_idle,
    input  wire                    ap_ready
);
    reg [ADDR_W-1:0] waddr;
    reg have_addr;
    reg have_data;
    reg [31:0] wbuf;
    reg [3:0] wmask;
    reg [31:0] words [0:N_WORDS-1];
    reg done_seen;
    reg ready_seen;
    reg auto_restart;
    reg gie;
    reg [1:0] ier;
    reg [1:0] isr;
    reg [1:0] read_step;                // 0: ready for an address; 1: its address held; 2: its flags held
    reg [ADDR_W-1:0] raddr;
    reg [N_WORDS-1:0] pick;             // the argument word the read names
    reg [3:0] pick_ctrl;                // or the control register 0x00, 0x04, 0x08, 0x0c

    assign awready = !have_addr && !bvalid;
    assign wready = !have_data && !bvalid;
    assign bresp = 2'b00;
    assign rresp = 2'b00;
    assign arready = !rvalid && read_step == 2'd0;
    assign interrupt = gie && (isr != 2'b00);

    wire write_now = have_addr && have_data && !bvalid;
    wire [31:0] strobe = {{8{wmask[3]}}, {8{wmask[2]}}, {8{wmask[1]}}, {8{wmask[0]}}};
    wire [15:0] waddr16 = {{(16 - ADDR_W){1'b0}}, waddr};
    wire [15:0] raddr16 = {{(16 - ADDR_W){1'b0}}, raddr};
    wire read_ctrl = read_step == 2'd2 && pick_ctrl[0];  // ap_done and ap_ready clear as they are read

    genvar g;
    generate
        for (g = 0; g < N_WORDS; g = g + 1) begin : g_args
            localparam [15:0] AT = ARG_ADDRS[16*g +: 16];
            assign args[32*g +: 32] = words[g];
            always @(posedge clk) if (read_step == 2'd1) pick[g] <= raddr == AT[ADDR_W-1:0];
            always @(posedge clk) begin
                if (rst) words[g] <= 32'd0;
                else if (write_now && waddr == AT[ADDR_W-1:0])
                    words[g] <= (words[g] & ~strobe) | (wbuf & strobe);
            end
        end
    endgenerate

    wire [31:0] ctrl_word = {22'd0, interrupt, 1'b0, auto_restart, 3'd0,
                             ready_seen || ap_ready, ap_idle, done_seen || ap_done, ap_start};
    reg [31:0] picked;                  // the flagged register's word (no flag: 0)
    integer k;
    always @(*) begin
        picked = ({32{pick_ctrl[0]}} & ctrl_word) | ({32{pick_ctrl[1]}} & {31'd0, gie})
               | ({32{pick_ctrl[2]}} & {30'd0, ier}) | ({32{pick_ctrl[3]}} & {30'd0, isr});
        for (k = 0; k < N_WORDS; k = k + 1) picked = picked | ({32{pick[k]}} & words[k]);
    end

    always @(posedge clk) begin
        if (rst) begin
            have_addr <= 1'b0;
            have_data <= 1'b0;
            bvalid <= 1'b0;
            rvalid <= 1'b0;
            read_step <= 2'd0;
            ap_start <= 1'b0;
            done_seen <= 1'b0;
            ready_seen <= 1'b0;
            auto_restart <= 1'b0;
            gie <= 1'b0;
            ier <= 2'b00;
            isr <= 2'b00;
        end else begin
            if (awvalid && awready) begin
                waddr <= awaddr;
                have_addr <= 1'b1;
            end
            if (wvalid && wready) begin
                wbuf <= wdata;
                wmask <= wstrb;
                have_data <= 1'b1;
            end
            if (write_now) begin
                have_addr <= 1'b0;
                have_data <= 1'b0;
                bvalid <= 1'b1;
            end else if (bvalid && bready) begin
                bvalid <= 1'b0;
            end

            // Control register semantics.
            if (ap_ready && !auto_restart) ap_start <= 1'b0;
            if (ap_done) done_seen <= 1'b1;
            else if (read_ctrl) done_seen <= 1'b0;
            if (ap_ready) ready_seen <= 1'b1;
            else if (read_ctrl) ready_seen <= 1'b0;
            if (ap_done && ier[0]) isr[0] <= 1'b1;
            if (ap_ready && ier[1]) isr[1] <= 1'b1;
            if (write_now && wmask[0]) begin
                case (waddr16)
                    16'h0000: begin
                        if (wbuf[0]) ap_start <= 1'b1;
                        auto_restart <= wbuf[7];
                    end
                    16'h0004: gie <= wbuf[0];
                    16'h0008: ier <= wbuf[1:0];
                    16'h000c: isr <= isr ^ wbuf[1:0];
                    default: ;
                endcase
            end

            if (arvalid && arready) begin
                raddr <= araddr;
                read_step <= 2'd1;
            end else if (read_step == 2'd1) begin
                pick_ctrl <= {raddr16 == 16'h000c, raddr16 == 16'h0008, raddr16 == 16'h0004, raddr16 == 16'h0000};
                read_step <= 2'd2;
            end else if (read_step == 2'd2) begin
                rdata <= picked;
                rvalid <= 1'b1;
                read_step <= 2'd0;
            end else if (rvalid && rready) begin
                rvalid <= 1'b0;
            end
        end
    end
endmodule
